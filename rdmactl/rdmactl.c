/* SPDX-License-Identifier: MIT */
/* placeholder: not written yet */
int main(void) { return 1; }
