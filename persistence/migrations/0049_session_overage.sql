-- 0049_session_overage.sql: a complete that its quotas had no room for (docs/rules.md §5,
-- "Late completes").
--
-- A session the sweeper released (no callback within 2 × LOI + 10 minutes) gave its quota
-- places back, and they may have been taken since. Its complete, arriving late, counts only
-- while its quotas still have room; beyond it the session is an overage: its outcome is
-- complete and its partner is paid, but it counts toward no quota or daily cap and the
-- buyer is not charged for it. A constant default adds the column without rewriting any
-- partition; no index names it, so a callback's update of its session stays HOT (0046).
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS overage boolean NOT NULL DEFAULT false;
