/*
 * check.h - offline consistency check (`raidfs check`), see check.c.
 */
#ifndef RAIDFS_CHECK_H
#define RAIDFS_CHECK_H

/* members: "DIR[:DIR...]" (modified).  Returns the exit status. */
int check_main(char *members);

#endif
