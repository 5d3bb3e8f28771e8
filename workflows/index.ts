export { runWorkflow } from './run-workflow';
export { contextPreviewWorkflow } from './context-preview-workflow';
export { capabilitiesWorkflow } from './capabilities-workflow';
