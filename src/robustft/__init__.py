"""robustft: fine-tune language models that stay right under adversarial word substitutions."""

__version__ = "0.1.0"
