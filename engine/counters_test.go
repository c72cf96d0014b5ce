package engine_test

import (
	"testing"

	"github.com/switchboard/switchboard/engine"
)

func TestCountersLifecycle(t *testing.T) {
	c := engine.NewCounters()
	day := ruleNow / 86400
	c.RecordEntry(1, []int64{10, 11})
	c.RecordEntry(1, []int64{10})
	if got := c.Quota(10); got != (engine.QuotaCounts{InProgress: 2, Entries: 2}) {
		t.Fatalf("after entries: %+v", got)
	}
	c.RecordOutcome(1, []int64{10, 11}, true, ruleNow)
	c.RecordOutcome(1, []int64{10}, false, ruleNow)
	if got := c.Quota(10); got != (engine.QuotaCounts{Completes: 1, InProgress: 0, Entries: 2}) {
		t.Fatalf("after outcomes: %+v", got)
	}
	if got := c.Campaign(1, ruleNow); got != (engine.CampaignCounts{Day: day, DayCompletes: 1, Sessions: 2, Completes: 1}) {
		t.Fatalf("campaign: %+v", got)
	}
	if got := c.Campaign(1, ruleNow+86400).DayCompletes; got != 0 {
		t.Fatalf("next day starts at %d", got)
	}
	c.RecordOutcome(1, nil, true, ruleNow+86400) // first complete of the next day
	if got := c.Campaign(1, ruleNow+86400).DayCompletes; got != 1 {
		t.Fatalf("next day count %d", got)
	}
	c.AddCompletes(1, []int64{10}, -1, ruleNow) // a late rejection of yesterday leaves today alone
	if got := c.Campaign(1, ruleNow+86400); got.DayCompletes != 1 || got.Completes != 1 {
		t.Fatalf("after rejection: %+v", got)
	}
	if got := c.Quota(10).Completes; got != 0 {
		t.Fatalf("quota completes after rejection %d", got)
	}
	c.RecordEntry(1, []int64{12})
	c.ReleaseSession([]int64{12})
	if got := c.Quota(12); got.InProgress != 0 || got.Entries != 1 {
		t.Fatalf("released: %+v", got)
	}
	c.SetQuota(12, engine.QuotaCounts{Completes: 5, InProgress: 1, Entries: 9})
	if got := c.Quota(12); got != (engine.QuotaCounts{Completes: 5, InProgress: 1, Entries: 9}) {
		t.Fatalf("set: %+v", got)
	}
}

func TestQuotaFull(t *testing.T) {
	cases := []struct {
		v     engine.QuotaCounts
		click bool
		want  bool
	}{
		{engine.QuotaCounts{Completes: 9}, false, false},
		{engine.QuotaCounts{Completes: 10}, false, true},
		{engine.QuotaCounts{Completes: 9, InProgress: 1}, false, true},
		{engine.QuotaCounts{Completes: 9, InProgress: -3}, false, false},
		{engine.QuotaCounts{Completes: 10, Entries: 9}, true, false},
		{engine.QuotaCounts{Entries: 10}, true, true},
	}
	for _, tc := range cases {
		if got := tc.v.Full(10, tc.click); got != tc.want {
			t.Errorf("%+v click=%v: Full=%v", tc.v, tc.click, got)
		}
	}
}
