# syntax=docker/dockerfile:1

# Build stage: a static binary (no cgo), so it runs on distroless/static.
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Download modules in their own layer so code changes do not refetch them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -o /out/nexo ./cmd/nexo

# Runtime stage: no shell, no package manager, runs as uid 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/nexo /nexo
COPY configs/nexo.yaml /etc/nexo/nexo.yaml
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/nexo", "--config", "/etc/nexo/nexo.yaml"]
