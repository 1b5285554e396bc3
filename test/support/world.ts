import { useNamespace } from './cluster.js';
import { configurationSpec, createClass, createConfiguration, createGateway, type Spec } from './fixtures.js';
import { controllerIdentity, type Reconciler } from './reconciler.js';

export interface World {
  ns(): string;
  r(): Reconciler;
  /** A GatewayClass of ours, unique to the test. */
  cls(): string;
  /** GatewayConfiguration `cfg` and Gateway `gw` referencing it, with infrastructure labels and annotations. */
  setup(opts?: { gw?: string; cfg?: string; spec?: Spec }): Promise<void>;
  key(gw?: string): { namespace: string; name: string };
}

/** Per test: a namespace, the controller's identity in it, and a class of ours. */
export function useWorld(prefix: string): World {
  const ns = useNamespace(prefix);
  let reconciler: Reconciler | undefined;
  let className = '';
  beforeEach(async () => {
    reconciler = await controllerIdentity(ns());
    className = `meridio-${ns()}`;
    await createClass(className);
  });
  return {
    ns,
    r: () => {
      if (!reconciler) throw new Error('world not set up');
      return reconciler;
    },
    cls: () => className,
    key: (gw = 'gw') => ({ namespace: ns(), name: gw }),
    setup: async ({ gw = 'gw', cfg = 'cfg', spec = configurationSpec() } = {}) => {
      await createConfiguration(ns(), cfg, spec);
      await createGateway(ns(), gw, className, cfg, { labels: { team: 'blue', app: 'user-tries-to-override' }, annotations: { 'example.com/note': 'hi' } });
    },
  };
}
