import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { SETTINGS, readSettings, serveUsage } from './settings-table.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The rows of the README's settings table: variable and default, as written, code marks removed. */
function readmeRows(): { variable: string; shownDefault: string }[] {
  const section = README.slice(README.indexOf('\n## Settings\n'), README.indexOf('\n## ', README.indexOf('\n## Settings\n') + 5));
  return section
    .split('\n')
    .filter((line) => /^\| `[A-Z]/.test(line))
    .map((line) => {
      const [variable, shownDefault] = line.split('|').slice(1, 3).map((cell) => cell.trim().replaceAll('`', ''));
      return { variable: variable!, shownDefault: shownDefault! };
    });
}

test("the README's settings table lists every setting of the table, in its order, with the same default", () => {
  expect(readmeRows()).toEqual(SETTINGS.map(({ variable, shownDefault }) => ({ variable, shownDefault })));
});

test('serve --help has a line per setting with its default', () => {
  const usage = serveUsage();
  for (const setting of SETTINGS) expect(usage).toContain(`  ${setting.variable.padEnd(28)}${setting.help} (default ${setting.shownDefault})`);
});

test('each fallback is what the shown default says, and a bad value names the variable and its rule', () => {
  const read = readSettings({});
  for (const setting of SETTINGS) {
    if (setting.fallback === undefined || typeof setting.fallback === 'object') continue;
    expect(String(read.get(setting.variable)), setting.variable).toBe(setting.shownDefault);
  }
  expect(() => readSettings({ JOB_CONCURRENCY: '1' })).toThrow('JOB_CONCURRENCY must be a whole number from 2 to 256, not "1"');
  expect(() => readSettings({ LOG_LEVEL: 'loud' })).toThrow(/^LOG_LEVEL must be one of fatal, error/);
});
