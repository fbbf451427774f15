"""The bad-input campaign of issue 12: `python tests/campaign/run_campaign.py --jobs 2`."""
