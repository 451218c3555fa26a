// Worker-thread entry used when the service runs from TypeScript sources (npm start, tests): worker
// threads do not inherit the tsx loader, so this thread registers it before loading the worker.
require('tsx/cjs');
module.exports = require('./engine-worker.ts');
