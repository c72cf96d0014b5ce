-- 0051_scopes_roles.sql: what a buyer token and an operator may do (docs/api.md,
-- "Authentication"; docs/operations.md, "Operators").
--
-- A buyer token's scope is read (every read of /api/v1 and /insights_api, no write) or
-- write (everything); an operator's role is viewer (reads the operator view) or admin
-- (also acts: unblocks). Constant defaults add the columns without rewriting the tables, and
-- keep every existing token write and every existing operator admin, as before.
ALTER TABLE buyer_tokens ADD COLUMN IF NOT EXISTS scope text NOT NULL DEFAULT 'write'
  CHECK (scope IN ('read', 'write'));
ALTER TABLE operators ADD COLUMN IF NOT EXISTS role text NOT NULL DEFAULT 'admin'
  CHECK (role IN ('viewer', 'admin'));
