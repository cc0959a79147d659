from forge.context import register_pass

def broken(:
    pass
