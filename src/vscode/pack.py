#!/usr/bin/env python3
"""Packages the built extension (out/src, package.json) as a .vsix: a zip with the VSIX manifest
and [Content_Types].xml beside extension/, what `code --install-extension` reads.
Usage: pack.py EXTENSION_DIR OUTPUT.vsix"""
import json
import os
import sys
import zipfile
from xml.sax.saxutils import escape


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "package.json"), encoding="utf-8") as f:
        m = json.load(f)
    e = {k: escape(str(m[k]), {'"': "&quot;"}) for k in ("name", "version", "publisher", "displayName", "description")}
    engine = escape(m["engines"]["vscode"])
    manifest = f"""<?xml version="1.0" encoding="utf-8"?>
<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011" xmlns:d="http://schemas.microsoft.com/developer/vsx-schema-design/2011">
  <Metadata>
    <Identity Language="en-US" Id="{e['name']}" Version="{e['version']}" Publisher="{e['publisher']}"/>
    <DisplayName>{e['displayName']}</DisplayName>
    <Description xml:space="preserve">{e['description']}</Description>
    <Properties>
      <Property Id="Microsoft.VisualStudio.Code.Engine" Value="{engine}"/>
    </Properties>
  </Metadata>
  <Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>
  <Dependencies/>
  <Assets>
    <Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/>
  </Assets>
</PackageManifest>
"""
    types = """<?xml version="1.0" encoding="utf-8"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
  <Default Extension=".json" ContentType="application/json"/>
  <Default Extension=".js" ContentType="application/javascript"/>
  <Default Extension=".md" ContentType="text/markdown"/>
  <Default Extension=".vsixmanifest" ContentType="text/xml"/>
</Types>
"""
    files = ["package.json"]
    for root, _, names in os.walk(os.path.join(src, "out", "src")):
        files += sorted(os.path.relpath(os.path.join(root, n), src) for n in names if n.endswith(".js"))
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("extension.vsixmanifest", manifest)
        z.writestr("[Content_Types].xml", types)
        for rel in files:
            z.write(os.path.join(src, rel), "extension/" + rel.replace(os.sep, "/"))
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
