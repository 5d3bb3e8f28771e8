export { runWorkflow } from './run-workflow';
export {
  authorizeIntegrationWorkflow, capabilitiesWorkflow, completeAuthorizationWorkflow, contextPreviewWorkflow, revokeAuthorizationWorkflow,
} from './helper-workflows';
export { evalWorkflow } from './eval-workflow';
