// Jest's default order, except that the suite-wide audit checks run last:
// they read what every other test made the controller do.
import Sequencer from '@jest/test-sequencer';

const LAST = /[\\/]test[\\/]integration[\\/]rbac-audit\.test\.ts$/;

// The package is CommonJS: its class arrives as `default` or as the module itself.
const Base = Sequencer.default || Sequencer;

export default class SuiteOrder extends Base {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const sorted = Array.isArray(ordered) ? ordered : [];
    return [...sorted.filter((t) => !LAST.test(t.path)), ...sorted.filter((t) => LAST.test(t.path))];
  }
}
