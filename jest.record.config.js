/** Records workflow histories for the replay test: `npm run record-histories`. */
const { projects, ...global } = require('./jest.config');
const integration = projects.find((project) => project.displayName === 'integration');
module.exports = { ...global, ...integration, roots: ['<rootDir>/test/runs/record'], testPathIgnorePatterns: ['/node_modules/'] };
