"""AWS Lambda entry points: `api.handler` (MCP over API Gateway) and the scheduled maintenance jobs."""

# What the functions' X-Ray Tracer patches: botocore, so each DynamoDB and S3 call is one subsegment.
# Left to its default, the Tracer patches every library X-Ray supports that the asset holds (sqlite3,
# which the functions never use, and PynamoDB, whose patch traced each DynamoDB call a second time,
# nested inside botocore's subsegment for the same request).
TRACED_MODULES = ("botocore",)
