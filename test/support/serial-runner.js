// The integration and browser tests run one file at a time in jest's own process, as `--runInBand`
// ran every test before: their files share one PostgreSQL database, one Temporal server and the
// sweeps that act on the whole database, and some restart PostgreSQL or Temporal. The unit tests,
// which share nothing, run first on every core (jest runs its runners one after another).
const TestRunner = require('jest-runner').default;

class SerialRunner extends TestRunner {
  get isSerial() {
    return true;
  }
}

module.exports = SerialRunner;
