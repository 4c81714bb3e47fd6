import { describe, expect, it } from 'vitest';
import { cpuUsedBetween } from '../../bench/lib/processes.js';

describe('the benchmark: CPU of its own processes during a run', () => {
  it('counts a process that started during the run (a new PostgreSQL backend of tollgate) from zero', () => {
    const before = new Map([
      [100, 5.0],
      [200, 1.5],
    ]);
    const after = new Map([
      [100, 5.75],
      [200, 1.5],
      [300, 0.25],
    ]);
    expect(cpuUsedBetween(before, after)).toBeCloseTo(1.0, 10);
  });

  it('counts nothing for a process that ended during the run', () => {
    const before = new Map([
      [100, 5.0],
      [200, 9.0],
    ]);
    expect(cpuUsedBetween(before, new Map([[100, 5.5]]))).toBeCloseTo(0.5, 10);
  });
});
