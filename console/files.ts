/**
 * What a console build holds: the API serves these files of console/dist and nothing else, each
 * with its content type. Shared by the build (console/build.ts) and the route (api/routes/console.ts).
 */
export const CONSOLE_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
} as const;

export type ConsoleFile = keyof typeof CONSOLE_FILES;
