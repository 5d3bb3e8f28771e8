/**
 * A worker's Worker Deployment Version (worker/versioning.ts): the deployment it belongs to and its
 * build. A run records the build its last turn ran on (the run object's `version`).
 */
export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}
