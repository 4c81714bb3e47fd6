/** One line of `tollgate doctor`'s report, shared by the modules that run the checks. */
export interface Check {
  check: string;
  outcome: 'ok' | 'warn' | 'fail' | 'skip';
  detail: string;
}
