/* The shim's launch of the sandboxed child (launch.c). */
#ifndef WL_SHIM_LAUNCH_H
#define WL_SHIM_LAUNCH_H

/* Reads the plan from its slot, clones the child, reports its pid to the agent and leaves fd 3 its pidfd,
 * 4 and 5 its output pipes (or closed), nothing else above 2. On failure it reports the step and errno
 * and exits 126. */
void shim_launch(void);
/* Reports a step that failed (to the agent, on the report slot) and exits 126; without the exit: */
_Noreturn void shim_launch_fail(const char *stage, int err);
void shim_report_failure(const char *stage, int err);

#endif
