/* A host object with no device code at all: not a link input. Fixture of tests/link. */
int fdlink_host_only(int x);
int fdlink_host_only(int x)
{
    return x + 1;
}
