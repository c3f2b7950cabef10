import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

export class Workspace extends Model<InferAttributes<Workspace>, InferCreationAttributes<Workspace>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare name: string;
  /** Integer credit balance; a run is gated on it being positive. */
  declare credits: CreationOptional<number>;
  /** Balance below which usage.threshold_reached fires once per crossing. */
  declare usageThreshold: CreationOptional<number | null>;
  declare partnerId: CreationOptional<number | null>;
  declare tenantRef: CreationOptional<string | null>;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    Workspace.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        name: { type: DataTypes.TEXT, allowNull: false },
        credits: { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 },
        usageThreshold: DataTypes.BIGINT,
        partnerId: DataTypes.BIGINT,
        tenantRef: DataTypes.TEXT,
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'workspaces', underscored: true, updatedAt: false },
    );
  }
}
