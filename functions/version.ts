// The release this function belongs to. package.json's version is the
// release's; this constant repeats it because the function runs from a
// startup snapshot with no package.json beside it (and importing package.json
// would copy it into dist/, where it would pass for the repository root).
// test/unit/release.test.ts keeps the two, the Dockerfile's VERSION and
// CHANGELOG.md in step. The function logs it at start, so that a log line
// tells which release is running.
export const VERSION = '0.1.0';
