import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TEMPLATE_PATH } from '../../functions/config.js';
import { loadTemplate, prepareTemplate } from '../../functions/reconcile/template.js';
import { templateFiles } from '../support/template-files.js';

// The startup snapshot carries the default template parsed at image build;
// TEMPLATE_PATH must keep its meaning: the file is read at every start, and
// only its exact text reuses the prepared parse.

const copyWith = templateFiles();

describe('prepared template', () => {
  const defaultText = readFileSync(DEFAULT_TEMPLATE_PATH, 'utf8');
  const prepared = prepareTemplate(DEFAULT_TEMPLATE_PATH);

  it('is the same template as a parse of the file', () => {
    expect(prepared.template).toEqual(loadTemplate(DEFAULT_TEMPLATE_PATH));
  });

  it('is reused when the file at TEMPLATE_PATH holds the same text, wherever it is mounted', () => {
    expect(loadTemplate(copyWith(defaultText), prepared)).toBe(prepared.template);
  });

  it('is not used for any other text: that template is parsed', () => {
    const own = defaultText.replace(/replicas: \d+/, 'replicas: 7');
    expect(own).not.toBe(defaultText);
    const loaded = loadTemplate(copyWith(own), prepared);
    expect(loaded).not.toBe(prepared.template);
    expect(loaded.deployment.spec?.replicas).toBe(7);
    expect(loaded.hash).not.toBe(prepared.template.hash);
  });

  it('does not hide a missing or invalid file', () => {
    expect(() => loadTemplate(join(tmpdir(), 'meridio2-no-such-template.yaml'), prepared)).toThrow(/ENOENT/);
    expect(() => loadTemplate(copyWith('apiVersion: v1\nkind: ConfigMap\n'), prepared)).toThrow(/has kind ConfigMap, want Deployment/);
  });
});
