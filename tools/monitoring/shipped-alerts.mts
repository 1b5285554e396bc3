// The alerts as shipped: alerts.mts's rules for the settings infra/ ships
// (the PingSource's schedule). Reads that file; the rules themselves stay pure.
import { alerts, type Alert } from './alerts.mts';
import { shippedResyncSeconds } from './resync-schedule.mts';

export const SHIPPED_RESYNC_SECONDS = shippedResyncSeconds();
export const ALERTS: readonly Alert[] = alerts({ resyncSeconds: SHIPPED_RESYNC_SECONDS });
