-- 0001: the tables of DESIGN.md 6. Append-only: change the schema in a new file.
-- Statements end with ';' at the end of a line (the runner splits there).
CREATE TABLE IF NOT EXISTS tb_seckill_voucher (
  voucher_id   BIGINT       NOT NULL PRIMARY KEY,
  init_stock   INT          NOT NULL,
  stock        INT          NOT NULL,
  begin_time   DATETIME(3)  NOT NULL,
  end_time     DATETIME(3)  NOT NULL,
  status       TINYINT      NOT NULL DEFAULT 1 COMMENT '1 on sale, 2 offline, 3 expired, 4 paused',
  create_time  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  update_time  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  CONSTRAINT ck_voucher_stock CHECK (stock >= 0 AND stock <= init_stock)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS tb_voucher_order (
  id           BIGINT       NOT NULL PRIMARY KEY COMMENT 'orderId (snowflake)',
  user_id      BIGINT       NOT NULL,
  voucher_id   BIGINT       NOT NULL,
  trace_id     BIGINT       NOT NULL,
  status       TINYINT      NOT NULL DEFAULT 1 COMMENT '1 active (paid/unpaid); nothing cancels yet',
  create_time  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  update_time  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  UNIQUE KEY uk_voucher_user (voucher_id, user_id),
  UNIQUE KEY uk_trace (trace_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS tb_voucher_order_router (
  order_id     BIGINT       NOT NULL PRIMARY KEY,
  user_id      BIGINT       NOT NULL,
  voucher_id   BIGINT       NOT NULL,
  create_time  DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY idx_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS tb_seckill_outcome (
  trace_id     BIGINT       NOT NULL PRIMARY KEY,
  order_id     BIGINT       NOT NULL,
  user_id      BIGINT       NOT NULL,
  voucher_id   BIGINT       NOT NULL,
  outcome      TINYINT      NOT NULL COMMENT '1 CREATED, 2 FAILED',
  reason       VARCHAR(64)  NULL COMMENT 'sold_out, has_order, lost, front_rollback, ...',
  created_at   DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY idx_voucher_user (voucher_id, user_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS tb_voucher_reconcile_log (
  id                     BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
  order_id               BIGINT        NOT NULL,
  user_id                BIGINT        NOT NULL,
  voucher_id             BIGINT        NOT NULL,
  message_id             VARCHAR(32)   NOT NULL COMMENT 'the traceId as a string (idempotency key)',
  detail                 VARCHAR(512)  NULL,
  before_qty             INT           NOT NULL DEFAULT 0,
  change_qty             INT           NOT NULL DEFAULT 0,
  after_qty              INT           NOT NULL DEFAULT 0,
  trace_id               BIGINT        NOT NULL COMMENT 'RESTORE rows carry the original trace_id',
  log_type               TINYINT       NOT NULL COMMENT '-1 deduct, 1 restore',
  business_type          TINYINT       NOT NULL COMMENT '1 ok, 2 timeout, 3 fail',
  reconciliation_status  TINYINT       NOT NULL DEFAULT 1 COMMENT '1 pending, 2 error, 3 inconsistent, 4 consistent',
  create_time            DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  update_time            DATETIME(3)   NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  UNIQUE KEY uk_trace_type (trace_id, log_type),
  KEY idx_voucher_status (voucher_id, reconciliation_status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
