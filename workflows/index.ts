export { runWorkflow } from './run-workflow';
export { capabilitiesWorkflow, contextPreviewWorkflow } from './helper-workflows';
