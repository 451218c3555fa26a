// Prints one plain closing line ("N passed, N failed") that any CI log reader understands.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `Tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`;
    process.stdout.write(`\n${line}\n`);
  }
}
module.exports = SummaryReporter;
