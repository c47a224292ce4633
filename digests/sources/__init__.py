"""Sources, the first stage: a feed's or page's bytes fetched within the address guard and size
caps, decoded."""
