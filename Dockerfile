# syntax=docker/dockerfile:1

# Build stage: a static binary (no cgo), so it runs on distroless/static.
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Download modules in their own layer so code changes do not refetch them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
# The version and commit `nexo --version` and nexo_build_info report: pass
# them in the build (make docker, or compose's build args), e.g.
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse --short=12 HEAD) .
# The .git directory is not in the build context, so Go cannot find them.
ARG VERSION=dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/nexo ./cmd/nexo

# Runtime stage: no shell, no package manager, runs as uid 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/nexo /nexo
COPY configs/nexo.yaml /etc/nexo/nexo.yaml
USER nonroot:nonroot
EXPOSE 8080
# No shell in the image: the binary probes its own /readyz (503 while
# starting, and from SIGTERM on while it drains).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["/nexo", "probe", "--url", "http://127.0.0.1:8080/readyz"]
ENTRYPOINT ["/nexo", "--config", "/etc/nexo/nexo.yaml"]
