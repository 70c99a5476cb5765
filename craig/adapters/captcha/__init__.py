"""Captcha verification adapters: a siteverify HTTP client and a disabled one."""
