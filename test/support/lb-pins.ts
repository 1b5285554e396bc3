import { readFileSync } from 'node:fs';
import { parseImageRef, templateImages, type LbImage } from '../../tools/release/lb-images.mjs';

/** The shipped LB template, whose images a release pins (tools/release/lb-images.mts). */
export const SHIPPED_LB_TEMPLATE = 'infra/templates/lb-deployment.yaml';

/**
 * The shipped template's images as a release resolves them when no registry
 * is asked: each by a made-up digest (`sha256:` and 64 times `fill`, plus
 * its place, so that no two are equal), for tests that write release files
 * without a registry.
 */
export function madeUpLbPins(fill = '3', text: string = readFileSync(SHIPPED_LB_TEMPLATE, 'utf8')): LbImage[] {
  return templateImages(text).map((i, n) => ({
    ...i,
    kept: false,
    from: i.image,
    pinned: { repository: parseImageRef(i.image).repository, digest: `sha256:${fill.repeat(63)}${n.toString(16)}` },
  }));
}
