package quality

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	policy "github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// The operators' side of quality (`switchboard quality`, docs/quality.md): the thresholds'
// text form and the lifting of a block.

// ParseThresholds reads the thresholds' text form, "class=n,class=n" (policy.Policy.Thresholds):
// each class one of the rule classes, each n a non-zero integer (negative: class off).
func ParseThresholds(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, n, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || !slices.Contains(policy.Classes, k) {
			return nil, fmt.Errorf("%q: want class=n with class one of %s", part, strings.Join(policy.Classes, ", "))
		}
		i, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || i == 0 {
			return nil, fmt.Errorf("%q: the threshold must be a non-zero integer", part)
		}
		out[k] = i
	}
	return out, nil
}

// Decisions is the storage of the lifting of blocks: a subset of persistence's QualityStore.
type Decisions interface {
	UnblockParticipant(ctx context.Context, publisherID int64, user, note string) ([]persistence.QualityBlock, error)
}

// Unblocking is what lifting a participant's block did.
type Unblocking struct {
	LiftedBlocks   []persistence.QualityBlock `json:"lifted_blocks"` // never nil
	PublisherID    int64                      `json:"publisher_id"`
	Unblocked      bool                       `json:"unblocked"` // whether a block was lifted
	UserIdentifier string                     `json:"user_identifier"`
}

// Unblock lifts the participant's quality block; every serve process hears of it through
// NOTIFY on persistence.QualityChannel.
func Unblock(ctx context.Context, d Decisions, publisherID int64, user, note string) (Unblocking, error) {
	lifted, err := d.UnblockParticipant(ctx, publisherID, user, note)
	if err != nil {
		return Unblocking{}, err
	}
	if lifted == nil {
		lifted = []persistence.QualityBlock{}
	}
	return Unblocking{LiftedBlocks: lifted, PublisherID: publisherID, Unblocked: len(lifted) > 0, UserIdentifier: user}, nil
}
