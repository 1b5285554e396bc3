// Jest's default order, except:
// - the test files that run what `npm test` builds in the background
//   (tools/beside-tests.mts) run after the others, so that on a cold
//   machine it is built while the others run (tools/assets.mts);
// - the suite-wide audit checks run last: they read what every other test
//   made the controller do.
//
// Loaded by Node outside jest's transform: the tools' source runs under
// Node's type stripping, as the builders do.
import Sequencer from '@jest/test-sequencer';
import { besideTests } from '../tools/beside-tests.mts';

const LAST = /[\\/]test[\\/]integration[\\/]rbac-audit\.test\.ts$/;
const LATER = besideTests().testFiles;

const isLater = (path) => LATER.some((file) => path.replaceAll('\\', '/').endsWith(`/${file}`));

// The package is CommonJS: its class arrives as `default` or as the module itself.
const Base = Sequencer.default || Sequencer;

export default class SuiteOrder extends Base {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const sorted = Array.isArray(ordered) ? ordered : [];
    const first = sorted.filter((t) => !LAST.test(t.path) && !isLater(t.path));
    return [...first, ...sorted.filter((t) => isLater(t.path)), ...sorted.filter((t) => LAST.test(t.path))];
  }
}
