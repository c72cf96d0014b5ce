-- 0050_excluded_suppliers.sql: the supply partners a campaign excludes (docs/rules.md §5.5,
-- "Supplier controls").
--
-- excluded_supplier_ids lists publisher ids whose participants the campaign never admits:
-- not offered, not entered, not re-routed into. It is written whole by a campaign create or
-- update and read with the campaign and by the engine feed. A constant default adds the
-- column without rewriting the table, and every existing campaign excludes no one.
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS excluded_supplier_ids bigint[] NOT NULL DEFAULT '{}';
