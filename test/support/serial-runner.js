// The integration and browser tests run one file at a time in jest's own process, as `--runInBand`
// ran every test before: their files share one PostgreSQL database, one Temporal server and the
// sweeps that act on the whole database, and some restart PostgreSQL or Temporal. The unit tests,
// which share nothing, run on every core (jest runs its runners one after another, never together).
const TestRunner = require('jest-runner').default;

class SerialRunner extends TestRunner {
  constructor(...args) {
    super(...args);
    // An instance field, not a getter: jest-runner declares `isSerial` as a class field, which would
    // shadow a getter of this class with `undefined` (and the files ran two at a time).
    this.isSerial = true;
  }
}

module.exports = SerialRunner;
