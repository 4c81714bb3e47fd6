/**
 * Test-only preload for gateway child processes (`NODE_OPTIONS=--import <this file>`): shifts `Date` (`Date.now()`
 * and `new Date()`) by the milliseconds written in the file named by TOLLGATE_TEST_CLOCK_FILE, read again every
 * 50 ms, so a test can move replicas to the next UTC day. Timers and `performance.now()` are untouched.
 */
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { setInterval } from 'node:timers';

const file = process.env.TOLLGATE_TEST_CLOCK_FILE;
if (file) {
  let offset = 0;
  const read = () => {
    try {
      offset = Number(readFileSync(file, 'utf8')) || 0;
    } catch {
      offset = 0;
    }
  };
  read();
  setInterval(read, 50).unref();
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + offset);
      else super(...args);
    }
    static now() {
      return realNow() + offset;
    }
  }
  globalThis.Date = ShiftedDate;
}
