-- 0002: snowflake worker-id leases in the database (DESIGN.md 2).
-- One row per worker id 0..1023, created here (not lazily), so that taking an id is always
-- a conditional UPDATE of an existing row and "the lowest usable id" is one indexed read.
-- A row is free when lease_until < NOW(3); a holder only mints ids stamped after the
-- previous holder's mint_until and not after its own (common/src/lease.c).
-- holder: 'host:pid:start_ms' of the process that holds (or last held) the id.
-- The initial times are the epoch: every id starts free and usable at once.
CREATE TABLE IF NOT EXISTS tb_worker_lease (
  worker_id    SMALLINT      NOT NULL PRIMARY KEY COMMENT 'snowflake worker id 0..1023',
  holder       VARCHAR(128)  NOT NULL DEFAULT '' COMMENT 'host:pid:start_ms of the holder, or of the last one',
  lease_until  DATETIME(3)   NOT NULL COMMENT 'DB time (UTC) the lease ends unless renewed',
  mint_until   DATETIME(3)   NOT NULL COMMENT 'DB time (UTC): no id of this worker is stamped after it; only raised',
  CONSTRAINT ck_worker_lease_id CHECK (worker_id BETWEEN 0 AND 1023)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

INSERT IGNORE INTO tb_worker_lease (worker_id, holder, lease_until, mint_until)
WITH RECURSIVE d (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 31)
SELECT a.n * 32 + b.n, '', '1970-01-01 00:00:01.000', '1970-01-01 00:00:01.000'
FROM d a CROSS JOIN d b;
