/**
 * Ends the run with the plain closing line CI reads ("N passed, N failed"), since jest's own summary
 * is not a format it knows.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stderr.write(`\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}

module.exports = SummaryReporter;
