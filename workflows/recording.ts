import { proxyLocalActivities } from '@temporalio/workflow';
import type { createActivities } from '../activities';

type Activities = ReturnType<typeof createActivities>;

/**
 * The workflow's short writes to (and reads of) our own database: local activities, run on this
 * worker without a round trip through the Temporal server, idempotent, and patient with a database
 * that is briefly away (up to 10 attempts).
 */
export const recording = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
});
