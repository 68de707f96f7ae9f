-- 0003: the order lifecycle of DESIGN.md 6 and 13. tb_voucher_order gains its status
-- values (1 UNPAID, 2 PAID, 3 CANCELLED, 4 CLOSED), pay_deadline, paid_at and closed_at;
-- one ACTIVE order (UNPAID or PAID) per (voucher, user) through a generated column under
-- the unique key, which keeps its name uk_voucher_user (the consumer tells has_order
-- apart by it); an index (status, pay_deadline) for the closer.
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS pay_deadline DATETIME(3) NULL AFTER status;
ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS paid_at DATETIME(3) NULL AFTER pay_deadline;
ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS closed_at DATETIME(3) NULL AFTER paid_at;
ALTER TABLE tb_voucher_order MODIFY COLUMN status TINYINT NOT NULL DEFAULT 1 COMMENT '1 UNPAID, 2 PAID, 3 CANCELLED, 4 CLOSED';
-- Orders from before the lifecycle have no payment step: PAID, pay_deadline NULL. An
-- UNPAID order created by the lifecycle always has a pay_deadline, so a re-run leaves it.
UPDATE tb_voucher_order SET status = 2 WHERE status = 1 AND pay_deadline IS NULL;
ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS active_user_id BIGINT AS (IF(status IN (1, 2), user_id, NULL)) STORED;
-- One statement: the old key (voucher_id, user_id) is replaced by the active-order key of
-- the same name; a re-run drops and re-adds the same key.
ALTER TABLE tb_voucher_order DROP INDEX uk_voucher_user, ADD UNIQUE KEY uk_voucher_user (voucher_id, active_user_id);
ALTER TABLE tb_voucher_order ADD INDEX IF NOT EXISTS idx_voucher_user_all (voucher_id, user_id);
ALTER TABLE tb_voucher_order ADD INDEX IF NOT EXISTS idx_status_deadline (status, pay_deadline);
