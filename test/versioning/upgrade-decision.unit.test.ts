import { upgradeDueOn } from '../../workflows/upgrade';

/**
 * When a run moves to its deployment's new target build (workflows/upgrade.ts). The decision is
 * pure; what the server says comes in as `targetChanged` (workflowInfo's
 * targetWorkerDeploymentVersionChanged) and `build` (the build this execution runs on).
 */
describe('moving a run to a new build at a turn boundary', () => {
  test('a versioned run told that its target build changed moves; untold, or unversioned, it stays', () => {
    expect(upgradeDueOn({ targetChanged: true, build: 'build-a' })).toBe(true);
    expect(upgradeDueOn({ targetChanged: false, build: 'build-a' })).toBe(false);
    expect(upgradeDueOn({ targetChanged: true, build: undefined })).toBe(false);
  });

  test('a continuation still on the build it moved from, and still told to move, does not move again', () => {
    // continueRun wrote upgradedFrom: 'build-a' as the run left build A; the new execution is on A all the same.
    expect(upgradeDueOn({ targetChanged: true, build: 'build-a' }, 'build-a')).toBe(false);
  });

  test('a run that moved once moves again when a later build becomes the target', () => {
    expect(upgradeDueOn({ targetChanged: true, build: 'build-b' }, 'build-a')).toBe(true);
    expect(upgradeDueOn({ targetChanged: false, build: 'build-b' }, 'build-a')).toBe(false);
  });
});
