-- 0004: bucketed stock (DESIGN.md 1, 6, 14) and the per-voucher degrade state (12).
-- tb_seckill_stock holds the ledger, one row per (voucher, bucket); a v3 voucher becomes
-- bucket 0 of itself (buckets = 1). Orders and outcomes record the bucket their unit came
-- from; outcomes record the path that decided them (kafka, or db for the DB-only path).
-- tb_seckill_voucher.stock is dropped by a later migration once no code reads it.
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS buckets TINYINT NOT NULL DEFAULT 1 COMMENT '1..16, fixed at creation' AFTER init_stock;

CREATE TABLE IF NOT EXISTS tb_seckill_stock (
  voucher_id   BIGINT       NOT NULL,
  bucket       TINYINT      NOT NULL COMMENT '0..buckets-1',
  init_stock   INT          NOT NULL,
  stock        INT          NOT NULL,
  update_time  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (voucher_id, bucket),
  CONSTRAINT ck_bucket_stock CHECK (stock >= 0 AND stock <= init_stock)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

INSERT IGNORE INTO tb_seckill_stock (voucher_id, bucket, init_stock, stock)
  SELECT voucher_id, 0, init_stock, stock FROM tb_seckill_voucher;

ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS bucket TINYINT NOT NULL DEFAULT 0 AFTER trace_id;
ALTER TABLE tb_seckill_outcome ADD COLUMN IF NOT EXISTS bucket TINYINT NOT NULL DEFAULT 0 AFTER voucher_id;
ALTER TABLE tb_seckill_outcome ADD COLUMN IF NOT EXISTS path VARCHAR(8) NOT NULL DEFAULT 'kafka' COMMENT 'kafka, or db (the DB-only path)' AFTER reason;

CREATE TABLE IF NOT EXISTS tb_seckill_stock_change (
  request_id   VARCHAR(64)  NOT NULL PRIMARY KEY,
  voucher_id   BIGINT       NOT NULL,
  amount       INT          NOT NULL,
  created_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY idx_voucher (voucher_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS tb_seckill_switch (
  scope        BIGINT       NOT NULL PRIMARY KEY COMMENT '0 = default for every voucher, else a voucherId',
  mode         VARCHAR(16)  NULL COMMENT 'auto, db_only, redis_only; NULL on a voucher row = scope 0''s',
  state        VARCHAR(16)  NOT NULL DEFAULT 'redis' COMMENT 'redis, draining, db, rebuilding',
  epoch        BIGINT       NOT NULL DEFAULT 0,
  since        DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  updated_by   VARCHAR(128) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

INSERT IGNORE INTO tb_seckill_switch (scope, mode, state, updated_by) VALUES (0, 'auto', 'redis', 'migration 0004');
INSERT IGNORE INTO tb_seckill_switch (scope, mode, state, updated_by)
  SELECT voucher_id, NULL, 'redis', 'migration 0004' FROM tb_seckill_voucher;
