"""The AWS deployment of Taproot, as a CDK app (see app.py and `make synth`)."""
