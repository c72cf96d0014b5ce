-- 0043_session_partitions_on_blocks.sql: a partition of sessions of at least a tid block
-- (2^20 ids, persistence/tid.go) ends where a block ends, so that from the first partition
-- made after this migration on every block lies in one partition: a callback's lookup by tid
-- reads one partition instead of two for the blocks that straddled a bound (every block, when
-- partitions span a block's size at unaligned bounds, as a young marketplace's do).
-- Partitions made already keep their bounds.
CREATE OR REPLACE FUNCTION switchboard_session_partition_end(lo bigint, span bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN span >= 1048576 THEN (lo + span + 1048575) / 1048576 * 1048576 ELSE lo + span END
$$;

-- As in 0036, with each new partition's end from switchboard_session_partition_end.
CREATE OR REPLACE FUNCTION switchboard_ensure_session_partitions(period interval, ahead int, min_span bigint)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  cur bigint;
  top bigint;
  nxt bigint;
  span bigint := min_span;
  p record;
  lo timestamptz;
  hi timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(7300451036);
  SELECT last_value INTO cur FROM sessions_id_seq;
  FOR p IN SELECT name, id_from FROM session_partitions WHERE id_from <= cur ORDER BY id_from LOOP
    EXECUTE format('SELECT (SELECT entered_at FROM %1$I ORDER BY id LIMIT 1), (SELECT entered_at FROM %1$I ORDER BY id DESC LIMIT 1)', p.name)
      INTO lo, hi;
    UPDATE session_partitions SET first_entered_at = lo, last_entered_at = hi
      WHERE name = p.name AND (first_entered_at IS DISTINCT FROM lo OR last_entered_at IS DISTINCT FROM hi);
  END LOOP;
  SELECT greatest(min_span, ((s.ids::numeric / extract(epoch FROM s.took)) * extract(epoch FROM period))::bigint) INTO span
  FROM (SELECT least(cur, id_to) - id_from AS ids, last_entered_at - first_entered_at AS took
        FROM session_partitions WHERE id_from <= cur AND last_entered_at - first_entered_at >= interval '1 hour'
        ORDER BY id_from DESC LIMIT 1) s;
  span := coalesce(span, min_span);
  SELECT max(id_to) INTO top FROM session_partitions;
  WHILE (SELECT count(*) FROM session_partitions WHERE id_from > cur) < ahead LOOP
    nxt := switchboard_session_partition_end(top, span);
    RETURN NEXT switchboard_add_session_partition(top, nxt);
    top := nxt;
  END LOOP;
END $$;
