// The release this function belongs to: package.json's version, the one
// place it is set. The image carries it as a label and the release's install
// file as an annotation (tools/release/release.mts); the function logs it at
// start, so that a log line tells which release is running. Bundled into the
// startup snapshot, so the image needs no package.json.
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
