package account

import (
	"context"
	"fmt"

	"github.com/nexo-im/nexo/domain"
)

// Blocks is the block store (store.BlockRepo).
type Blocks interface {
	Block(ctx context.Context, blocker, blocked string) error
	Unblock(ctx context.Context, blocker, blocked string) error
	Blocks(ctx context.Context, blocker string) ([]domain.Block, error)
	BlockersOf(ctx context.Context, userID string, users []string) (map[string]bool, error)
}

// BlockRequest is the body of POST /user/block and POST /user/unblock.
type BlockRequest struct {
	UserID string `json:"user_id"`
}

// Validate requires a well-formed user_id.
func (r *BlockRequest) Validate() error { return domain.CheckID("user_id", r.UserID) }

// BlockJSON is one entry of GET /user/blocks.
type BlockJSON struct {
	UserID    string `json:"user_id"`
	CreatedAt int64  `json:"created_at"`
}

// BlocksJSON answers GET /user/blocks: the caller's blocks, oldest first.
type BlocksJSON struct {
	Blocks []BlockJSON `json:"blocks"`
}

// Block makes caller refuse req.UserID's single-chat messages, typing
// indicators and group invitations (docs/moderation.md). Blocking is
// idempotent and does not check that the user exists, so it tells nothing
// about other accounts. Errors: bad_request (oneself), forbidden (more
// than domain.MaxBlocks blocks).
func (s *Service) Block(ctx context.Context, caller string, req BlockRequest) (struct{}, error) {
	if s.blocks == nil {
		return struct{}{}, domain.NewError(domain.ErrForbidden, "blocking is not available")
	}
	if req.UserID == caller {
		return struct{}{}, domain.BadField("user_id", "must not be yourself")
	}
	have, err := s.blocks.Blocks(ctx, caller)
	if err != nil {
		return struct{}{}, err
	}
	if len(have) >= domain.MaxBlocks {
		for _, b := range have {
			if b.UserID == req.UserID {
				return struct{}{}, nil
			}
		}
		return struct{}{}, domain.NewError(domain.ErrForbidden, fmt.Sprintf("you may block at most %d users", domain.MaxBlocks))
	}
	if err := s.blocks.Block(ctx, caller, req.UserID); err != nil {
		return struct{}{}, err
	}
	s.gate.Forget(caller)
	return struct{}{}, nil
}

// Unblock lifts caller's block of req.UserID; lifting none is fine.
func (s *Service) Unblock(ctx context.Context, caller string, req BlockRequest) (struct{}, error) {
	if s.blocks == nil {
		return struct{}{}, domain.NewError(domain.ErrForbidden, "blocking is not available")
	}
	if err := s.blocks.Unblock(ctx, caller, req.UserID); err != nil {
		return struct{}{}, err
	}
	s.gate.Forget(caller)
	return struct{}{}, nil
}

// Blocks lists caller's blocks, oldest first.
func (s *Service) Blocks(ctx context.Context, caller string) (BlocksJSON, error) {
	out := BlocksJSON{Blocks: []BlockJSON{}}
	if s.blocks == nil {
		return out, nil
	}
	list, err := s.blocks.Blocks(ctx, caller)
	if err != nil {
		return out, err
	}
	for _, b := range list {
		out.Blocks = append(out.Blocks, BlockJSON{UserID: b.UserID, CreatedAt: b.CreatedAt})
	}
	return out, nil
}
