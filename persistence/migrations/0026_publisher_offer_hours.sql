-- 0026_publisher_offer_hours.sql: GET /campaigns answers per publisher and UTC hour, for the
-- offers of GET /supply_api/v4/stats. Every serve process counts its answers in memory (no
-- database work on the hot path) and adds them here about once a minute.
CREATE TABLE publisher_offer_hours (
  publisher_id bigint NOT NULL REFERENCES publishers(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL CHECK (date_trunc('hour', hour AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' = hour),
  offers bigint NOT NULL CHECK (offers >= 0),
  PRIMARY KEY (publisher_id, hour)
);
