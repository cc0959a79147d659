from forge.driver.registry import register_pass

def broken(:
    pass
