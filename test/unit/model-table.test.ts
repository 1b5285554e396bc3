// The startup-snapshot bundle gives the template decoder only the API models
// reachable from V1Deployment (tools/bundle/model-table.mts). The decoder
// only ever asks for the attribute map of a type it reached through another
// type's attributes, so that closure must hold every model it can ask for,
// with the very maps the API client has.
import * as models from '@kubernetes/client-node';
import { DECODED_ROOTS, reachableModels } from '../../tools/bundle/model-table.mts';

type Models = Parameters<typeof reachableModels>[0];
const all = models as unknown as Models;

describe('the decoder models in the bundle', () => {
  const table = reachableModels(all, DECODED_ROOTS);

  it('holds the Deployment, the pod spec and what they contain, not the whole API', () => {
    for (const type of ['V1Deployment', 'V1DeploymentSpec', 'V1PodTemplateSpec', 'V1PodSpec', 'V1Container', 'V1ResourceRequirements', 'V1Volume', 'V1ObjectMeta']) expect(table).toHaveProperty(type);
    const everyModel = Object.keys(all).filter((k) => typeof all[k]?.getAttributeTypeMap === 'function');
    expect(Object.keys(table).length).toBeLessThan(everyModel.length / 4);
    expect(table).not.toHaveProperty('V1Pod');
    expect(table).not.toHaveProperty('V1CustomResourceDefinition');
  });

  it('is closed: every model an attribute names is in it, with the API client\'s own map', () => {
    for (const [type, attributes] of Object.entries(table)) {
      expect(attributes).toEqual(all[type]?.getAttributeTypeMap?.().map(({ name, baseName, type: t, format }) => ({ name, baseName, type: t, format })));
      for (const a of attributes) {
        for (const id of a.type.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) {
          if (all[id]?.getAttributeTypeMap !== undefined) expect(table).toHaveProperty(id);
        }
      }
    }
  });
});
