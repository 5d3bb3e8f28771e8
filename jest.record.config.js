/** Records workflow histories for the replay test: `npm run record-histories`. */
const base = require('./jest.config');
module.exports = { ...base, roots: ['<rootDir>/test/runs/record'], testPathIgnorePatterns: ['/node_modules/'] };
