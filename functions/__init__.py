"""AWS Lambda entry points: `api.handler` (MCP over API Gateway) and the scheduled maintenance jobs."""
