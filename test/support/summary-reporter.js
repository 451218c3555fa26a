// Prints one plain closing line ("N passed, N failed") that any CI log reader understands, and keeps it
// in .data/test-summary.txt so that .ci/run can print it again as the very last line of its log
// (jest's own summary and the global teardown print after the reporters).
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`;
    process.stdout.write(`\n${line}\n`);
    const file = path.resolve(__dirname, '..', '..', '.data', 'test-summary.txt');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${line}\n`);
  }
}
module.exports = SummaryReporter;
