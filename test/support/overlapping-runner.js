// One runner for every project, so that the two kinds of test files run at the same time instead of
// one kind after the other (jest runs its runners one after another, never together).
// - The integration and browser files run one at a time in jest's own process, as `--runInBand` ran
//   every test before: their files share one PostgreSQL database, one Temporal server and the sweeps
//   that act on the whole database, and some restart PostgreSQL or Temporal.
// - The unit files share nothing and run meanwhile in worker processes: one fewer than jest's
//   --maxWorkers while serial files run (that process takes a core), all of them otherwise.
// A run jest itself puts in band (`-i`, or a single file) stays wholly in band.
const TestRunner = require('jest-runner').default;
const { EmittingTestRunner } = require('jest-runner');

/** The projects whose files share nothing and may run in parallel workers. */
const PARALLEL_PROJECTS = new Set(['unit']);

const projectName = (test) => {
  const name = test.context.config.displayName;
  return typeof name === 'string' ? name : name?.name;
};

class OverlappingRunner extends EmittingTestRunner {
  constructor(globalConfig, context, options) {
    super(globalConfig, context, options);
    this.isSerial = false;
    this.inBand = new TestRunner(globalConfig, context, options);
  }

  on(eventName, listener) {
    const off = this.inBand.on(eventName, listener);
    this.listeners = [...(this.listeners ?? []), [eventName, listener]];
    return () => {
      off();
      this.listeners = (this.listeners ?? []).filter(([e, l]) => e !== eventName || l !== listener);
    };
  }

  async runTests(tests, watcher, options) {
    if (options.serial) return this.inBand.runTests(tests, watcher, options);
    const parallel = tests.filter((test) => PARALLEL_PROJECTS.has(projectName(test)));
    const serial = tests.filter((test) => !PARALLEL_PROJECTS.has(projectName(test)));
    const workers = serial.length > 0 ? Math.max(1, this._globalConfig.maxWorkers - 1) : this._globalConfig.maxWorkers;
    // The pool's own global config names its worker count; the scheduler subscribed to this runner's
    // events before the run, so its listeners are added to the pool's emitter as well.
    this.pool = new TestRunner({ ...this._globalConfig, maxWorkers: workers }, this._context, this._options);
    const offs = (this.listeners ?? []).map(([eventName, listener]) => this.pool.on(eventName, listener));
    try {
      await Promise.all([
        serial.length > 0 ? this.inBand.runTests(serial, watcher, { ...options, serial: true }) : undefined,
        parallel.length > 0 ? this.pool.runTests(parallel, watcher, { ...options, serial: false }) : undefined,
      ]);
    } finally {
      for (const off of offs) off();
    }
  }
}

module.exports = OverlappingRunner;
