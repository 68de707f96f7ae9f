/* producer/deadline.h: the front's own request deadline (DESIGN.md 8). */
#pragma once

/** Start the timer thread that answers each pending request at its deadline
 *  (2 x delivery timeout + 1 s): 503 PENDING for a purchase that may have taken stock,
 *  a plain 503 otherwise. It never rolls back. @returns 0, -1 if the thread could not
 *  be created. */
int fr_deadline_start(void);
/** Stop and join the timer thread. */
void fr_deadline_stop(void);
