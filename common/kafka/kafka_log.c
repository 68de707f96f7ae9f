/* kafka_log.c: sk_kafka_log_cb (sk/kafka.h), librdkafka's own log lines routed into the
 * binary's key=value log, the one callback every binary's handles set.
 * What it does not do: decide anything from a line (errors that matter arrive through
 * the error and delivery callbacks), or log anything of its own. It is the one logging
 * function of common/kafka, because what it prints is librdkafka's output, not ours. */
#include "sk/kafka.h"
#include "sk/log.h"

void sk_kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
        (void)rk;
        /* syslog levels: 0-3 emerg..err, 4 warning, 5 notice, 6 info, 7 debug. */
        SK_LOG(level <= 3 ? SK_ERROR : level == 4 ? SK_WARN : level == 5 ? SK_INFO : SK_DEBUG,
               "kafka_log", "fac=%s msg=\"%s\"", fac, buf);
}
